/* trace: threads.txt */
/* pid$target over a trace of two processes: the first one's probes fire,
 * as before; the child's matching entries (main and fib in pid 101) are
 * counted, not fired, and said on stderr with the way to see them. */
#pragma D option quiet

pid$target:a.out::entry
{
	@[pid, probefunc] = count();
}

END
{
	printa("%d %s %@d\n", @);
}
