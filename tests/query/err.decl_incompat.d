/* A declared variable keeps its type: storing another is a compile error, in dtrace's words. */
int x;

BEGIN
{
	x = "text";
}
