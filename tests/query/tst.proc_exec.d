/* trace: exec.txt */
/*
 * proc:::exec fires in the image that calls exec, as it ends;
 * exec-success in the new image, whose thread keeps its self-> variables
 * (the Guide's whoexec.d sets one at exec and reads it at exec-success);
 * exec-failure, from the system calls, where an exec failed (arg0 the
 * error). A string compares with NULL (it is "" when unset), and NULL
 * stored in it unsets it.
 */
#pragma D option quiet

proc:::exec
{
	printf("%d %d exec in [%s]\n", timestamp, pid, curpsinfo->pr_psargs);
	self->parent = curpsinfo->pr_psargs;
}

proc:::exec-failure
{
	printf("%d %d exec-failure %d\n", timestamp, pid, arg0);
}

proc:::exec-success
/self->parent != NULL/
{
	printf("%d %d exec-success from [%s] to [%s]\n", timestamp, pid, self->parent, curpsinfo->pr_psargs);
	self->parent = NULL;
}

proc:::exec-success
/self->parent == NULL/
{
	printf("unset again\n");
}

proc:::exit
{
	printf("%d %d exit %d\n", timestamp, pid, arg0);
}
