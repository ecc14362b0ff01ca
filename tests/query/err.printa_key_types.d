/* printa( ) of several aggregations: a string key against an int key. */
BEGIN
{
	@a["y"] = count();
	@b[2] = sum(5);
	printa("%s %@d %@d\n", @a, @b);
	exit(0);
}
