/* trace: kernel.txt */
/*
 * args[N]-> names a probe's structured arguments: sched:::wakeup's and the
 * io provider's, not on-cpu's.
 */
sched:::on-cpu
{
	@[args[0]->b_bcount] = count();
}
