/*
 * printa() of two aggregations without a format is one table, as dtrace
 * prints it: the keys of either, a column of values each (0 where one has
 * no such key); NULL is 0.
 */
#pragma D option quiet

BEGIN
{
	@c["x"] = count();
	@c["y"] = count();
	@c["y"] = count();
	@s["x"] = sum(5);
	@s["z"] = sum(7);
	printa(@c, @s);
	printf("NULL %d\n", NULL == 0);
	exit(0);
}
