/* trace: threads.txt */
/* The proc provider: processes and threads start and end; create fires in
 * the parent with the child's pid. */
#pragma D option quiet

proc:::start, proc:::exit, proc:::lwp-start, proc:::lwp-exit
{
	printf("%d %s pid %d tid %d ppid %d arg0 %d\n", timestamp, probename, pid, tid, ppid, arg0);
}

proc:::create
{
	printf("%d create in pid %d tid %d: child %d\n", timestamp, pid, tid, arg0);
}
