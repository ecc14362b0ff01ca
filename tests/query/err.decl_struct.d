/* Types callscope cannot hold are refused by name. */
struct timespec ts;

BEGIN
{
	exit(0);
}
