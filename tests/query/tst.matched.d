/*
 * Without quiet, dtrace says on stderr what the script's descriptions
 * matched (tst.matched.d.stderr): here leaf's and work's entries, and END.
 */
pid$target::leaf:entry,
pid$target::work:entry
{
	@[probefunc] = count();
}

END
{
	printa("%s %@d\n", @);
}
