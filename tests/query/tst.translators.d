/* trace: kernel.txt */
/*
 * curpsinfo and curlwpsinfo where a probe fires in a thread, and
 * sched:::wakeup's args[0] (lwpsinfo_t) and args[1] (psinfo_t) of the
 * woken thread; the constants scripts compare them with (SSLEEP,
 * SONPROC); stringof of a string.
 */
#pragma D option quiet

sched:::off-cpu
{
	printf("%d off %c %d %d \"%s\"\n", curlwpsinfo->pr_lwpid, curlwpsinfo->pr_sname,
	    curlwpsinfo->pr_state == SSLEEP, curlwpsinfo->pr_onpro, curpsinfo->pr_psargs);
}

sched:::wakeup
{
	printf("\"%s\" woke %d of %s (pid %d, ppid %d) in state %c\n", execname, args[0]->pr_lwpid,
	    stringof(args[1]->pr_fname), args[1]->pr_pid, args[1]->pr_ppid, args[0]->pr_sname);
}

pid$target::work:entry
{
	printf("%d %s %d\n", curpsinfo->pr_pid, curpsinfo->pr_fname, curlwpsinfo->pr_state == SONPROC);
}
