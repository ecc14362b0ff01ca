#include <unistd.h>
#include <pthread.h>
int a[2], b[2];
void* peer(void* x){ (void)x; char c; for(int i=0;i<20000;i++){ if(read(a[0],&c,1)!=1) break; if(write(b[1],&c,1)!=1) break;} return 0;}
void ping(void){ char c='x'; for(int i=0;i<20000;i++){ if(write(a[1],&c,1)!=1) break; if(read(b[0],&c,1)!=1) break;} }
int main(){ pipe(a); pipe(b); pthread_t t; pthread_create(&t,0,peer,0); ping(); pthread_join(t,0); return 0; }
