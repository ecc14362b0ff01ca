/*
 * setopt() changes an option while the script runs, as in dtrace: here
 * the aggregation's order (by key, then reversed) and quiet, which takes
 * the probe line off the clauses after it.
 */
BEGIN
{
	@a[3] = count();
	@a[1] = count();
	@a[1] = count();
	@a[2] = count();
	@a[2] = count();
	@a[2] = count();
	setopt("aggsortkey");
	setopt("aggsortrev", "1");
	trace("not quiet yet");
}

BEGIN
{
	setopt("quiet");
	printf("quiet now\n");
}

BEGIN
{
	printa("%d %@d\n", @a);
	setopt("aggsortrev", "0");
	printa("%d %@d\n", @a);
	exit(0);
}
