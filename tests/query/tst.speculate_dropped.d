/*
 * speculate() of a speculation that is not active (discarded here) drops
 * the rest of its clause, as dtrace does: its assignment does not happen
 * and its printf is not printed; the drop is counted.
 */
#pragma D option quiet

BEGIN
{
	s = speculation();
	x = 1;
}

BEGIN
{
	discard(s);
}

BEGIN
{
	speculate(s);
	x = 2;
	printf("not printed\n");
}

BEGIN
{
	printf("x=%d\n", x);
	exit(0);
}
