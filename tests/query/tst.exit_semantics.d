/*
 * exit() as dtrace has it: the clause that calls it goes on to its end,
 * the firing's later clauses do not run, END runs, and an exit() in END
 * says the status (3 here, not the first clause's 1).
 */
#pragma D option quiet

BEGIN
{
	printf("first\n");
	exit(1);
	printf("the same clause\n");
}

BEGIN
{
	printf("not printed: after exit()\n");
}

END
{
	printf("end\n");
	exit(3);
}
