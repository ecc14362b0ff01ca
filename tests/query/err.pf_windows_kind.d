/* trace: kernel_io.txt */
/*
 * DTrace for Windows' fault kinds other than hardflt: Linux's events do
 * not say them, and the message says what does exist.
 */
pf:::dzero_flt
{
	@ = count();
}
