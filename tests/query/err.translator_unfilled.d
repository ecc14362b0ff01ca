/* trace: kernel.txt */
/*
 * A member of a translated structure that the recording cannot fill is
 * refused, never given as 0.
 */
sched:::on-cpu
{
	@[curlwpsinfo->pr_pri] = count();
}
