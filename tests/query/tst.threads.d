/* trace: threads.txt */
/* Threads and processes in time order: two threads of pid 100 and its
 * child 101. */
#pragma D option quiet

pid*:::entry
{
	printf("%d %d/%d %s %s\n", timestamp, pid, tid, probeprov, probefunc);
}
