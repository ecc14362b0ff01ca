/* duration and selfduration (ns) and depth in return probes: leaf inside
 * lex inside parse inside work. */
#pragma D option quiet

pid$target::work:return,
pid$target::parse:return,
pid$target::lex:return,
pid$target::leaf:return
{
	printf("%-6s depth %d duration %d self %d at %d\n", probefunc, depth, duration, selfduration, timestamp);
}
