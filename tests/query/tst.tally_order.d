/* Clauses that only count, keyed by the probe's names, are added up and
 * passed on in bulk (a live query's speed): whatever reads the aggregation
 * sees every count up to its own firing, and trunc() in between is kept. */
#pragma D option quiet

pid$target:a.out::entry
{
	@[probefunc] = count();
}

pid$target:a.out:lex:return
{
	printa("%-6s %@d\n", @);
	printf("--\n");
}

pid$target:a.out:work:return
{
	trunc(@);
}
