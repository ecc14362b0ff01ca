/* arg1 at a pid return is the return value: refused too (it was 0). */
pid$target:::return
{
	@[probefunc] = quantize(arg1);
}
