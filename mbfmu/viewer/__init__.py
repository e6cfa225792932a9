"""mbfmu.viewer"""
