/*
 * arg0 stays what its provider says where the clause names no pid probe
 * (proc:::exit, how the process ended), beside a clause that is a pid
 * probe's and does not use it.
 */
#pragma D option quiet

pid$target::main:entry
{
	printf("%s entered\n", probefunc);
}

proc:::exit
{
	printf("exit %d\n", arg0);
}
