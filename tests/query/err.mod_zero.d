/* So is a constant zero modulus, folded from an expression and an inline. */
inline int ZERO = 2 - 2;

BEGIN
{
	y = 7;
	y %= ZERO;
}
