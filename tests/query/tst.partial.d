/* Partial descriptions read from the right: "lex:entry" is "::lex:entry",
 * "return" is ":::return". */
#pragma D option quiet

lex:entry
{
	printf("%s:%s:%s:%s\n", probeprov, probemod, probefunc, probename);
}

return
/probefunc == "main"/
{
	printf("%s %s\n", probefunc, probename);
}
