/* Offset probes are not there: callscope sees entries and returns. */
pid$target:a.out:main:4
{
}
