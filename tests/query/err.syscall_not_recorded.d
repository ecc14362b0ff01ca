/*
 * A trace recorded without --events syscalls: an empty answer would read
 * as "no system call was made", so a description naming the provider is
 * refused with what to do.
 */
syscall::write:entry
{
	@ = count();
}
