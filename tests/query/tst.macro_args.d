/* args: -- lex 2 */
/* $1 in a description, $2 in a predicate; $target is the traced program. */
#pragma D option quiet

BEGIN
{
	n = 0;
}

pid$target::$1:entry
/++n == $2/
{
	printf("%s call %d, pid %d is $target %d\n", probefunc, n, pid, $target);
}
