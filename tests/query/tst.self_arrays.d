/* trace: threads.txt */
/*
 * Thread-local associative arrays: self->ts[probefunc] keeps one entry
 * per function for each thread (the Dynamic Tracing Guide's idiom), so
 * the time it gives each call is the call's duration -- in every thread,
 * nested calls too -- and a thread never reads another's.
 */
#pragma D option quiet

pid$target:::entry
{
	self->ts[probefunc] = timestamp;
	self->n[probefunc, 1]++;
}

pid$target:::return
/self->ts[probefunc]/
{
	@t[tid, probefunc] = sum(timestamp - self->ts[probefunc]);
	@d[tid, probefunc] = sum(duration);
	self->ts[probefunc] = 0;
}

pid$target:::return
/self->n[probefunc, 1] > 1/
{
	@again[tid, probefunc] = count();
}

END
{
	printa("%d %-8s %@d %@d\n", @t, @d);
	printa("%d %s entered before %@d\n", @again);
}
