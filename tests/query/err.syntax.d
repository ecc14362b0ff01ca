/* A syntax error names the file and line. */
BEGIN
{
	x = ;
}
