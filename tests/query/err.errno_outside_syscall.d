/* trace: kernel.txt */
/*
 * errno is a thread's last system call's error: known at the syscall
 * provider's probes, not between them.
 */
syscall::read:return, pid$target::work:entry
{
	@[errno] = count();
}
