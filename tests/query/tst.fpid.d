/* fpid is pid; arg0 of an entry is the function's address. */
#pragma D option quiet

fpid$target::lex:entry
{
	printf("%s %s\n", probeprov, arg0 == 0 ? "no address" : "an address");
}
