/* Every function of the executable counted at entry: D's one-liner. */
pid$target:a.out::entry
{
	@[probefunc] = count();
}
