/*
 * setopt() of an option that does not exist: refused when the script is
 * compiled, where dtrace says so at run time.
 */
BEGIN
{
	setopt("nosuchoption");
}
