/* trace: samples.txt */
/*
 * Over a trace with CPU samples (record --sample), profile-N fires at
 * each sample, in its thread, at its time -- not on the clock: arg1 is
 * the program's instruction sampled (0 when it was the kernel's, then in
 * arg0), so ufunc(arg1) is the function that ran, hooks or none; ustack()
 * is the thread's calls under way, or in a thread with none, the
 * sample's unwound frames.
 */
#pragma D option quiet

profile-1000
{
	printf("%d %d %s %d %d\n", timestamp, tid, arg1 ? "user" : "kernel", arg0 != 0, ustackdepth);
	@f[ufunc(arg1)] = count();
	@s[tid, ustack()] = count();
}
