/* trace: gaps.txt */
/* Lost events fire proc:::lost (arg0: how many); a pause counts in no
 * duration, a loss in the duration but not the self time. */
#pragma D option quiet

proc:::lost
{
	printf("lost %d at %d at depth %d\n", arg0, timestamp, ustackdepth);
}

pid$target::main:return
{
	printf("main duration %d self %d\n", duration, selfduration);
}
