/* Declarations fix a variable's type: stores convert to it; inlines are substituted where used. */
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

BEGIN
{
	x = 0x1ffffffff;
	c = 300;
	a = LIMIT + 1;
	s = NAME;
	counts["a"]++;
	m[1, "b"] = 3;
	this->n = 5;
	self->depth++;
	printf("%d %d %d %s %d %d %d %d %d %d\n", x, c, a, s, counts["a"], m[1, "b"], this->n, self->depth, t, b);
	print(x);
	printf("\n");
	print(LIMIT);
	printf("\n");
}

pid$target::main:entry
/self->depth == 0 && counts["a"] == 1/
{
	/* a new thread's self->depth reads 0 of its declared type */
	printf("main: depth %d, c %d\n", self->depth, c);
	exit(0);
}
