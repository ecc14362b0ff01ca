/*
 * D's arg0 at a pid entry is the function's first argument: callscope
 * records none, and a stand-in (it was the function's address, so that
 * `arg0 == 4` was accepted and matched nothing) would be a silent wrong
 * answer. Refused, with what names the function instead (issue 33).
 */
pid$target::lex:entry
/arg0 == 4/
{
	@ = count();
}
