/* A second declaration must agree with the first. */
int x;
string x;

BEGIN
{
	exit(0);
}
