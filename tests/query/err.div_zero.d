/* A constant zero divisor is a compile error, not a runtime ERROR. */
BEGIN
{
	x = 1 / 0;
}
