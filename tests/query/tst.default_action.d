/* Without quiet, a clause with no action prints D's default line. */
pid$target::leaf:entry
{
}
