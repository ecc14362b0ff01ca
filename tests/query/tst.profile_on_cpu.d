/* trace: kernel_profile.txt */
/*
 * profile-N over a trace with the context switches fires in the threads
 * on a CPU then, as dtrace's samples what runs: at 1 ms both threads, at
 * 2 ms the worker alone (app sleeps in work from 1.5 to 2.5 ms), at 3 ms
 * both.  tick-N fires once each time, outside the threads.
 */
#pragma D option quiet

profile-1000
{
	printf("%d %d %s\n", timestamp, tid, curlwpsinfo->pr_sname == 'O' ? "on" : "?");
	@[tid] = count();
}

tick-1000
{
	printf("%d tick\n", timestamp);
}
