/* trace: kernel.txt */
/*
 * The syscall provider over a recording (record --events syscalls): a
 * call's arguments at entry (arg0..arg5), where it was made (the thread's
 * call path then), and the return value and errno at return: -1 and the
 * error for a failed call, as dtrace gives them; errno at entry is the
 * thread's last call's.  In time order across threads.
 */
#pragma D option quiet

syscall::write:entry, syscall::openat:entry, syscall::read:entry
{
	printf("%d %s:%s:%s(%d, %x, %d), errno %d\n", tid, probemod, probefunc, probename, arg0, arg1, arg2,
	    errno);
	printf("%d depth %d %x %x %x\n", tid, depth, arg3, arg4, arg5);
}

syscall::write:return, syscall::openat:return, syscall::read:return
{
	printf("%d %s:%s = %d %d errno %d\n", tid, probefunc, probename, arg0, arg1, errno);
}

syscall::openat:entry
{
	ustack();
}

syscall:::entry
{
	@calls[probefunc] = count();
}
