/* fpid is pid; its entries name the function (arg0 is refused, err.pid_arg0.d). */
#pragma D option quiet

fpid$target::lex:entry
{
	printf("%s %s %s\n", probeprov, probemod, probefunc);
}
