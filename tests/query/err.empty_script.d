/*
 * A script of no clause -- pragmas and declarations alone -- would wait
 * for nothing: refused, as dtrace refuses it.
 */
#pragma D option quiet
int x;
