/*
 * An option that sizes what the script is compiled into cannot change
 * while it runs: refused when the script is compiled.
 */
BEGIN
{
	setopt("nspec", "4");
}
