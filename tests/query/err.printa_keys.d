/*
 * printa( ) of several aggregations prints them as one table, a row per
 * key: their keys must match, as D requires. Two keys against one were
 * accepted (issue 33: "a two-aggregation printa with different keys").
 */
BEGIN
{
	@a[1] = count();
	@b["x", 2] = count();
	printa(@a, @b);
	exit(0);
}
