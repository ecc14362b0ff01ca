/*
 * A clause-local associative array: refused, as D refuses it (self->a[k]
 * works: tst.self_arrays.d).
 */
BEGIN
{
	this->a[1] = 2;
}
