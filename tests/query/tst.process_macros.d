/*
 * dtrace's macro variables of its own process: $pid, $ppid, $pgid, $sid,
 * $uid, $gid, $euid, $egid, as integers, and as strings with $$.  Their
 * values are checked against the system calls in the unit test
 * Lexer.ProcessMacrosAreTheKernels; here only what holds on any machine (a
 * group or session led from outside a container's pid namespace is 0).
 */
#pragma D option quiet

BEGIN
{
	printf("%d %d %d %d\n", $pid > 1, $ppid > 0, $pid != $ppid, $pgid >= 0 && $sid >= 0);
	printf("%d %d %d\n", $$pid == lltostr($pid), $$uid == lltostr($uid), $$sid == lltostr($sid));
	printf("%d %d\n", $euid == $uid || $euid != $uid, $egid == $gid || $egid != $gid);
	exit(0);
}
