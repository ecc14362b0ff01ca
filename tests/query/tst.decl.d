/* Declarations: types fixed by the declaration, stores converted to them, inlines substituted. */
#pragma D option quiet
int x;
uint64_t t;
string s;
self int depth;
this int n;
int a, b;
int counts[string];
int m[int, string];
inline int LIMIT = 100;
inline string NAME = "x";
unsigned char c;
BEGIN {
  x = 0x1ffffffff; c = 300; a = LIMIT + 1; s = NAME;
  counts["a"]++; m[1, "b"] = 3; this->n = 5; self->depth++;
  printf("%d %d %d %s %d %d %d %d %d %d\n", x, c, a, s, counts["a"], m[1,"b"], this->n, self->depth, t, b);
  print(x); print(LIMIT);
  exit(0);
}
