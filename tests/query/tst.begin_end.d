/* BEGIN before every event, END after the last, with the trace's times. */
#pragma D option quiet

BEGIN
{
	printf("BEGIN at %d pid %d execname %s\n", timestamp, pid, execname);
}

pid$target::main:entry
{
	printf("main at %d pid %d tid %d execname %s\n", timestamp, pid, tid, execname);
}

END
{
	printf("END at %d\n", timestamp);
}
