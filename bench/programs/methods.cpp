// A C++ workload of many small methods: a class hierarchy of shapes, a
// visitor, virtual and non-virtual member functions, over an array of
// objects. Used by bench/run.sh beside fib.c.
//
//   methods ITERATIONS [SHAPES]     (defaults: 20000 iterations, 300 shapes)
//
// Every method is noinline so that the plain -O2 build makes the same calls
// as the instrumented builds (GCC keeps -finstrument-functions hooks of
// inlined functions, so without noinline the baseline would lose calls the
// instrumented builds still pay for).
//
// Calls per shape per iteration, identical for the three shape kinds:
//   Shape::accept (virtual)                  1
//   Visitor::visit (virtual)                 1
//   X::area (virtual) -> helper              2   (Circle: sq; Rect: mul; Tri: heron)
//   X::perimeter (virtual) -> helper         2   (Circle: twice_pi_r; Rect: add2; Tri: add3)
//   Stats::add (non-virtual)                 1
//   Shape::scale (virtual) -> Shape::clamp   2
//                                           --
//                                            9
// plus 2 per iteration (Stats::reset, Stats::mean) and the setup and
// teardown calls (make_shape, constructors, destructors, main). The exact
// total is read from a callscope trace by run.sh.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#define NI __attribute__((noinline))

struct Circle;
struct Rect;
struct Tri;

struct Visitor {
  virtual ~Visitor() = default;
  virtual void visit(const Circle& c) = 0;
  virtual void visit(const Rect& r) = 0;
  virtual void visit(const Tri& t) = 0;
};

class Shape {
 public:
  NI explicit Shape(double s) : s_(s) {}
  virtual ~Shape() = default;
  virtual double area() const = 0;
  virtual double perimeter() const = 0;
  virtual void accept(Visitor& v) const = 0;
  NI virtual void scale(double f) { s_ = clamp(s_ * f); }
  double size() const { return s_; }

 protected:
  NI static double clamp(double x) { return x < 0.5 ? 0.5 : (x > 2.0 ? 2.0 : x); }
  double s_;
};

struct Circle final : Shape {
  NI explicit Circle(double r) : Shape(1.0), r_(r) {}
  NI double area() const override { return 3.141592653589793 * sq(r_ * s_); }
  NI double perimeter() const override { return twice_pi_r(r_ * s_); }
  NI void accept(Visitor& v) const override { v.visit(*this); }
  NI static double sq(double x) { return x * x; }
  NI static double twice_pi_r(double r) { return 6.283185307179586 * r; }
  double r_;
};

struct Rect final : Shape {
  NI Rect(double w, double h) : Shape(1.0), w_(w), h_(h) {}
  NI double area() const override { return mul(w_ * s_, h_ * s_); }
  NI double perimeter() const override { return 2.0 * add2(w_ * s_, h_ * s_); }
  NI void accept(Visitor& v) const override { v.visit(*this); }
  NI static double mul(double a, double b) { return a * b; }
  NI static double add2(double a, double b) { return a + b; }
  double w_, h_;
};

struct Tri final : Shape {
  NI Tri(double a, double b, double c) : Shape(1.0), a_(a), b_(b), c_(c) {}
  NI double area() const override { return heron(a_ * s_, b_ * s_, c_ * s_); }
  NI double perimeter() const override { return add3(a_ * s_, b_ * s_, c_ * s_); }
  NI void accept(Visitor& v) const override { v.visit(*this); }
  // Squared area (Heron without the root): no libm call in the loop.
  NI static double heron(double a, double b, double c) {
    double p = (a + b + c) / 2;
    return p * (p - a) * (p - b) * (p - c);
  }
  NI static double add3(double a, double b, double c) { return a + b + c; }
  double a_, b_, c_;
};

class Stats {
 public:
  NI void reset() { n_ = 0; sum_ = 0; }
  NI void add(double x) { ++n_; sum_ += x; }
  NI double mean() const { return n_ ? sum_ / n_ : 0.0; }

 private:
  long n_ = 0;
  double sum_ = 0;
};

// Adds area/perimeter of each shape it visits.
class Measure final : public Visitor {
 public:
  explicit Measure(Stats& st) : st_(st) {}
  NI void visit(const Circle& c) override { st_.add(c.area() / c.perimeter()); }
  NI void visit(const Rect& r) override { st_.add(r.area() / r.perimeter()); }
  NI void visit(const Tri& t) override { st_.add(t.area() / t.perimeter()); }

 private:
  Stats& st_;
};

NI static std::unique_ptr<Shape> make_shape(unsigned i) {
  switch (i % 3) {
    case 0: return std::make_unique<Circle>(1.0 + i % 7);
    case 1: return std::make_unique<Rect>(1.0 + i % 5, 2.0 + i % 3);
    default: return std::make_unique<Tri>(3.0 + i % 2, 4.0, 5.0);
  }
}

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? atol(argv[1]) : 20000;
  const unsigned count = argc > 2 ? static_cast<unsigned>(atol(argv[2])) : 300;
  std::vector<std::unique_ptr<Shape>> shapes;
  shapes.reserve(count);
  for (unsigned i = 0; i < count; ++i) shapes.push_back(make_shape(i));
  Shape* const* arr = reinterpret_cast<Shape* const*>(shapes.data());  // no STL calls in the loop

  Stats st;
  Measure m(st);
  double acc = 0;
  for (long it = 0; it < iterations; ++it) {
    st.reset();
    const double f = (it & 1) ? 1.01 : 0.99;
    for (unsigned i = 0; i < count; ++i) {
      arr[i]->accept(m);
      arr[i]->scale(f);
    }
    acc += st.mean();
  }
  std::printf("methods: %ld iterations x %u shapes, checksum %.6f\n", iterations, count, acc);
  return 0;
}
