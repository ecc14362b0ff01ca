/*
 * strtok()'s first argument is a string, or NULL to go on: another
 * integer is refused.
 */
BEGIN
{
	trace(strtok(1, ","));
}
