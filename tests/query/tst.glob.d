/* Globs in every field: *, ? and [...]. */
#pragma D option quiet

pid*:a.ou?:[lp]*:e*
{
	printf("%s\n", probefunc);
}
