/* trace: kernel_profile.txt */
/*
 * vtimestamp is the thread's time on a CPU, from its context switches:
 * work() takes 1.2 ms, of which app sleeps 1 ms (1.5 to 2.5 ms): 0.2 ms
 * on a CPU; fib() in the worker takes 3.3987 ms, less 50 us preempted.
 */
#pragma D option quiet

pid$target::work:entry, pid$target::fib:entry
{
	self->v = vtimestamp;
	self->t = timestamp;
}

pid$target::work:return, pid$target::fib:return
{
	printf("%s: %d ns, %d on a CPU\n", probefunc, timestamp - self->t, vtimestamp - self->v);
}
