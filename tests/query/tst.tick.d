/* trace: clock.txt */
/* tick-1s fires every second of trace time while the trace lasts (3.5 s). */
#pragma D option quiet

BEGIN
{
	n = 0;
}

tick-1s
{
	printf("tick at %d, %d calls of work so far\n", timestamp, n);
}

pid$target::work:entry
{
	n++;
}
