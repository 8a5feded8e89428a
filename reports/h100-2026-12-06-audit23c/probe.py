# Look-alike of gsv-tts-lite's per-token loop statements (no engine code): which of them sync on CUDA, and
# whether a step shaped like its captured decode_next_token records with torch.cuda.graph. Output: probe.txt.
import torch,warnings
d='cuda';torch.cuda.set_sync_debug_mode(1)
H,L,V,D=4,64,1025,8
kv=torch.zeros(4,dtype=torch.int64,device=d);kl=kv[:1];kl.fill_(7)
m=torch.zeros(1,H,1,L,dtype=torch.bool,device=d);m4=torch.zeros(4,H,1,L,dtype=torch.bool,device=d)
lg=torch.randn(1,V,device=d);pe=torch.randn(L,1,D,device=d);pre=torch.zeros(1,5,dtype=torch.int64,device=d)
pt=torch.zeros(4,L,dtype=torch.int64,device=d);bi=torch.arange(4,device=d);s4=torch.ones(4,1,dtype=torch.int64,device=d)
def t(n,f):
  torch.cuda.synchronize()
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter('always');f()
  print(n,'SYNC' if any('synchroniz' in str(x.message) for x in w) else 'nosync',flush=True)
def a():
  if kl==L: pass
t('A if kl==int',a)
def b(): m[:,:,:,kl]=True
t('B mask[...,kl]=True',b)
def b4(): m4[bi,:,:,kv]=True
t('B4 mask[bi,:,:,kv]=True',b4)
def c(): lg[:,[280,486,1024]]=-float('Inf')
t('C list index',c)
t('D pe[kl-5]',lambda: pe[kl-5])
t('E concat',lambda: torch.concat([pre,pre[:,:1]],1))
def f():
  sc=torch.gather(lg,1,pre);sc=torch.where(sc<0,sc*1.35,sc/1.35);lg.scatter_(1,pre,sc)
  x=lg/max(1.0,1e-5);v,_=torch.topk(x,15);x=torch.where(x<v[:,-1].unsqueeze(-1),-float('Inf'),x)
  p=torch.softmax(x,-1);q=torch.empty_like(p).exponential_(1);return torch.argmax(p/q,-1,keepdim=True)
t('F sample',f)
def g(): pt[bi,kv]=s4.squeeze()
t('G pre_tokens[bi,kv]=s',g)
def h():
  if (kv>3).any(): pass
t('H any',h)
def i(): m[:,:,:,:kl]=True
t('I slice by device',i)
# capture look-alike step
kc=torch.zeros(1,H,L,D,device=d);x=torch.randn(1,H,1,D,device=d);s=torch.cuda.Stream();s.wait_stream(torch.cuda.current_stream())
def step():
  kc[bi[:1],:,kl]=x.squeeze(2);o=torch.nn.functional.scaled_dot_product_attention(x,kc,kc,attn_mask=m);kl.add_(1);return o
with torch.cuda.stream(s):
  for _ in range(3): step()
torch.cuda.current_stream().wait_stream(s);torch.cuda.synchronize();kl.fill_(7)
torch.cuda.set_sync_debug_mode(0)
g_=torch.cuda.CUDAGraph()
with torch.cuda.graph(g_): o=step()
g_.replay();torch.cuda.synchronize();print('capture ok, kl after replay',kl.item(),torch.__version__)
