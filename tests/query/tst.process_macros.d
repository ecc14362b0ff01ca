/*
 * dtrace's macro variables of its own process: $pid, $ppid, $pgid, $sid,
 * $uid, $gid, $euid, $egid, as integers, and as strings with $$.
 */
#pragma D option quiet

BEGIN
{
	printf("%d %d %d %d\n", $pid > 1, $ppid > 0, $pgid > 0, $sid > 0);
	printf("%d %d\n", $$pid == lltostr($pid), $$uid == lltostr($uid));
	printf("%d %d\n", $euid == $uid || $euid != $uid, $egid == $gid || $egid != $gid);
	exit(0);
}
