# Why the mask write syncs: a Python scalar set through a tensor index is uploaded by a blocking copy; a
# device-resident value is not. Output: probe.txt (second half).
import torch,warnings
d='cuda';torch.cuda.set_sync_debug_mode(1)
H,L=4,64
kv=torch.zeros(4,dtype=torch.int64,device=d);kl=kv[:1];kl.fill_(7)
m=torch.zeros(1,H,1,L,dtype=torch.bool,device=d);m4=torch.zeros(4,H,1,L,dtype=torch.bool,device=d)
pt=torch.zeros(4,L,dtype=torch.int64,device=d);bi=torch.arange(4,device=d)
one=torch.ones((),dtype=torch.bool,device=d)
def t(n,f):
  torch.cuda.synchronize()
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter('always');f()
  print(n,'SYNC' if any('synchroniz' in str(x.message) for x in w) else 'nosync',[str(x.message)[:60] for x in w if 'prototype' not in str(x.message)],flush=True)
def p1(): m[:,:,:,kl]=one
t('P1 device value',p1)
def p2(): pt[bi,kv]=1
t('P2 pt[bi,kv]=1 int',p2)
def p4(): m[:,:,:,kl]=torch.tensor(True)
t('P4 cpu 0-dim value',p4)
def p5(): m4[bi,:,:,kv]=one
t('P5 batched device value',p5)
def p6(): m[0,0,0,kl]=True
t('P6 m[0,0,0,kl]=True',p6)
def p7(): m.index_put_((bi[:1].view(1,1,1,1).expand(1,H,1,1)*0,torch.arange(H,device=d).view(1,H,1,1),torch.zeros(1,H,1,1,dtype=torch.long,device=d),kl.view(1,1,1,1).expand(1,H,1,1)),one)
t('P7 index_put_ device',p7)
def p8(): m.masked_fill_(torch.zeros_like(m),True)
t('P8 masked_fill scalar',p8)
def p9():
  x=torch.randn(1,1025,device=d); x[:,[1,2,3]]=-float('inf')
t('P9 list index float',p9)
sup=torch.tensor([1,2,3],device=d)
def p10():
  x=torch.randn(1,1025,device=d); x[:,sup]=-float('inf')
t('P10 device index float scalar',p10)
