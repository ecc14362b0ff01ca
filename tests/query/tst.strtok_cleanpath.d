/*
 * strtok() keeps its place for the firing's clauses, strtok(NULL, ...)
 * going on from it, and gives "" (dtrace's NULL) once no token is left;
 * a new firing starts with none. cleanpath() takes "//", "/./" and
 * "/NAME/../" out as dtrace.c does ("/." at the end stays, "/.." at the
 * end leaves its "/").
 */
#pragma D option quiet

BEGIN
{
	printf("[%s]", strtok(",,a,b;c;;d", ","));
}

BEGIN
{
	printf("[%s]", strtok(NULL, ";"));
	printf("[%s]", strtok(NULL, ";"));
	printf("[%s]", strtok(NULL, ";"));
	printf("[%s]\n", strtok(NULL, ";"));
}

END
{
	printf("[%s]\n", strtok(NULL, ","));
	printf("%s\n", cleanpath("/foo//bar/./baz/../qux"));
	printf("%s\n", cleanpath("/a/b/.."));
	printf("%s\n", cleanpath("/a/."));
	printf("%s\n", cleanpath("a/../b"));
	printf("%s\n", cleanpath("/../x"));
	printf("%s\n", cleanpath("/x/..y/.z/"));
	printf("%s\n", cleanpath(""));
}

BEGIN
{
	exit(0);
}
