/* trace: kernel_io.txt */
/*
 * The pf provider (record --events faults): pf:::fault fires for every page
 * fault, then pf:::minor or pf:::major (DTrace for Windows' hardflt too);
 * arg0 the address, arg1 the instruction, arg2 1 for a fault the kernel
 * took in a system call.  ustack() is where the thread was.
 */
#pragma D option quiet

pf:::fault
{
	printf("%d %s:%s %x %x %d\n", tid, probemod, probename, arg0, arg1, arg2);
	ustack();
}

pf:::minor, pf:::major, pf:::hardflt
{
	@[probename] = count();
}
